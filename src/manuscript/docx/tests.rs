//! The reader against whole documents (the fixtures, and the outside corpus when present) and
//! crafted hostile archives.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::read;
use crate::document::{Block, Document, Inline, plain_text};
use crate::manuscript::{InputError, Limits};

/// A fixture document (`tests/fixtures/docx/NAME`), or for the debugging dumps below one of the
/// outside corpus when the fixtures have no such name.
fn docx(name: &str) -> Vec<u8> {
    let fixture = crate::test_support::fixture(&format!("docx/{name}"));
    let path = match crate::test_support::corpus::outside_corpus() {
        Some(outside) if !fixture.exists() => outside.join("docx").join(name),
        _ => fixture,
    };
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every DOCX to sweep: the fixtures', then the outside corpus's when present.
fn every_docx() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in crate::test_support::corpus::sweep_dirs() {
        let mut here: Vec<PathBuf> = std::fs::read_dir(dir.join("docx"))
            .expect("test input")
            .map(|entry| entry.expect("test input").path())
            .filter(|path| path.extension().is_some_and(|e| e == "docx"))
            .collect();
        here.sort();
        files.extend(here);
    }
    files
}

/// How many DOCX fixtures `tests/fixtures/make_fixtures.py` writes.
const DOCX_FIXTURES: usize = 12;

/// All the text of a document: chapters, then notes.
fn all_text(doc: &Document) -> String {
    let mut out = String::new();
    for chapter in &doc.chapters {
        out.push_str(&plain_text(&chapter.blocks));
    }
    for note in &doc.notes {
        out.push_str(&plain_text(&note.blocks));
    }
    out
}

#[test]
fn dump() {
    let Ok(name) = std::env::var("DOCX_DUMP") else {
        return;
    };
    let parsed = read(&docx(&name), &Limits::default()).expect("test input");
    println!("{:#?}", parsed.document);
    println!("{:#?}", parsed.warnings);
    println!("---\n{}", all_text(&parsed.document));
}

#[test]
fn every_document_reads_with_text() {
    let mut count = 0;
    for path in every_docx() {
        let bytes = std::fs::read(&path).expect("test input");
        let parsed = read(&bytes, &Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert!(!parsed.document.chapters.is_empty(), "{}", path.display());
        assert!(
            all_text(&parsed.document)
                .chars()
                .any(char::is_alphanumeric),
            "{}",
            path.display()
        );
        count += 1;
    }
    assert!(count >= DOCX_FIXTURES, "only {count} documents");
}

/// Writes each document's text to `$DOCX_TEXT_DIR/NAME.txt`, for comparing with pandoc.
#[test]
fn export_text() {
    let Some(out) = std::env::var_os("DOCX_TEXT_DIR") else {
        return;
    };
    for path in every_docx() {
        let parsed = read(
            &std::fs::read(&path).expect("test input"),
            &Limits::default(),
        )
        .expect("test input");
        let name = path
            .file_stem()
            .expect("test input")
            .to_string_lossy()
            .into_owned();
        // Pandoc's plain text includes images' alt text.
        let mut text = all_text(&parsed.document);
        let mut alts = Vec::new();
        let mut blocks: Vec<Block> = parsed
            .document
            .chapters
            .iter()
            .flat_map(|c| c.blocks.clone())
            .collect();
        collect_alts(&mut blocks, &mut alts);
        text.push_str(&alts.join("\n"));
        std::fs::write(Path::new(&out).join(name + ".txt"), text).expect("test input");
    }
}

fn collect_alts(blocks: &mut [Block], alts: &mut Vec<String>) {
    for block in blocks.iter() {
        if let Block::Figure { alt, .. } = block {
            alts.push(alt.clone());
        }
    }
    crate::manuscript::tidy::visit_inlines(blocks, &mut |inlines: &mut Vec<Inline>| {
        for i in inlines.iter() {
            if let Inline::Image { alt, .. } = i {
                alts.push(alt.clone());
            }
        }
    });
}

// ---- Crafted archives ----

const DOC_START: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>"#;
const DOC_END: &str = "</w:body></w:document>";
const ROOT_RELS: &str = r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;

fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        out.start_file(*name, options).expect("test input");
        out.write_all(data).expect("test input");
    }
    out.finish().expect("test input").into_inner()
}

/// A document whose body is `body`, with extra parts.
fn docx_with(body: &str, extra: &[(&str, &[u8])]) -> Vec<u8> {
    let document = format!("{DOC_START}{body}{DOC_END}");
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("_rels/.rels", ROOT_RELS.as_bytes()),
        ("word/document.xml", document.as_bytes()),
    ];
    entries.extend_from_slice(extra);
    zip(&entries)
}

fn read_err(bytes: &[u8], limits: &Limits) -> InputError {
    match read(bytes, limits) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn a_truncated_or_garbage_archive_is_corrupt() {
    let good = docx_with("<w:p><w:r><w:t>Hello</w:t></w:r></w:p>", &[]);
    assert!(read(&good, &Limits::default()).is_ok());
    let truncated = &good[..good.len() / 2];
    assert!(matches!(
        read_err(truncated, &Limits::default()),
        InputError::CorruptZip { .. }
    ));
    assert!(matches!(
        read_err(b"PK\x03\x04garbage", &Limits::default()),
        InputError::CorruptZip { .. }
    ));
}

#[test]
fn a_zip_without_a_document_is_not_docx() {
    let bytes = zip(&[("hello.txt", b"hi")]);
    assert_eq!(read_err(&bytes, &Limits::default()), InputError::NotDocx);
}

#[test]
fn too_many_entries_are_refused() {
    let names: Vec<String> = (0..20).map(|i| format!("f{i}.txt")).collect();
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
    let limits = Limits {
        max_zip_entries: 10,
        ..Limits::default()
    };
    assert!(matches!(
        read_err(&zip(&entries), &limits),
        InputError::TooManyEntries {
            entries: 20,
            limit: 10
        }
    ));
}

#[test]
fn unsafe_entry_names_are_refused_wherever_they_are() {
    for name in ["../evil.xml", "/etc/passwd", "C:/windows/x", "word/../../x"] {
        let bytes = docx_with("<w:p><w:r><w:t>Hi</w:t></w:r></w:p>", &[(name, b"x")]);
        assert!(
            matches!(
                read_err(&bytes, &Limits::default()),
                InputError::UnsafePath { .. }
            ),
            "{name}"
        );
    }
}

#[test]
fn declared_and_actual_inflation_over_the_limit_is_a_zip_bomb() {
    let big = vec![b'a'; 100_000];
    let limits = Limits {
        max_inflated_bytes: 50_000,
        ..Limits::default()
    };
    // Declared too big.
    let bytes = docx_with(
        "<w:p><w:r><w:t>Hi</w:t></w:r></w:p>",
        &[("word/media/big.bin", &big)],
    );
    assert!(matches!(
        read_err(&bytes, &limits),
        InputError::ZipBomb { .. }
    ));

    // Declared small, inflates big: patch the sizes in the local and central headers.
    let mut bytes = zip(&[
        ("_rels/.rels", ROOT_RELS.as_bytes()),
        ("word/document.xml", &big),
    ]);
    let declared = (big.len() as u32).to_le_bytes();
    let small = 10u32.to_le_bytes();
    let mut i = 0;
    while let Some(p) = bytes[i..].windows(4).position(|w| w == declared) {
        bytes[i + p..i + p + 4].copy_from_slice(&small);
        i += p + 4;
    }
    let err = read_err(&bytes, &limits);
    assert!(matches!(err, InputError::ZipBomb { .. }), "{err:?}");

    // Many small entries over the total.
    let parts: Vec<String> = (0..6).map(|i| format!("word/media/{i}.bin")).collect();
    let chunk = vec![b'a'; 10_000];
    let mut entries: Vec<(&str, &[u8])> = parts
        .iter()
        .map(|p| (p.as_str(), chunk.as_slice()))
        .collect();
    entries.push(("_rels/.rels", ROOT_RELS.as_bytes()));
    let bytes = zip(&entries);
    assert!(matches!(
        read_err(&bytes, &limits),
        InputError::ZipBomb { .. }
    ));
}

#[test]
fn a_doctype_anywhere_is_refused() {
    let doc = format!(
        r#"<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>{}<w:p><w:r><w:t>&lol2;</w:t></w:r></w:p>{DOC_END}"#,
        &DOC_START[DOC_START.find("<w:document").expect("test input")..]
    );
    let bytes = zip(&[
        ("_rels/.rels", ROOT_RELS.as_bytes()),
        ("word/document.xml", doc.as_bytes()),
    ]);
    assert!(matches!(
        read_err(&bytes, &Limits::default()),
        InputError::XmlDoctype { .. }
    ));
}

#[test]
fn malformed_xml_and_unknown_entities_are_xml_errors() {
    let bytes = docx_with("<w:p><w:r><w:t>Hi</w:r></w:p>", &[]);
    assert!(
        matches!(read_err(&bytes, &Limits::default()), InputError::Xml { part, .. } if part == "word/document.xml")
    );
    let bytes = docx_with("<w:p><w:r><w:t>&xxe;</w:t></w:r></w:p>", &[]);
    assert!(matches!(
        read_err(&bytes, &Limits::default()),
        InputError::Xml { .. }
    ));
}

#[test]
fn a_phone_photo_stored_sideways_is_turned_upright() {
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.jpeg"/></Relationships>"#;
    let body = r#"<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:docPr id="1" name="x" descr="A hen"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData><a:blip r:embed="rId9"/></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"#;
    let photo = crate::test_support::sideways_photo();
    let bytes = docx_with(
        body,
        &[
            ("word/_rels/document.xml.rels", rels.as_bytes()),
            ("word/media/image1.jpeg", &photo),
        ],
    );
    let parsed = read(&bytes, &Limits::default()).expect("accepted");
    let image = &parsed.document.images[0];
    assert_eq!((image.width, image.height), (200, 300));
    crate::test_support::assert_upright(&parsed.resources[&image.id]);
}

#[test]
fn an_image_that_is_not_an_image_fails_and_emf_is_dropped_with_a_warning() {
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.png"/></Relationships>"#;
    let body = r#"<w:p><w:r><w:t>Text</w:t></w:r></w:p><w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:docPr id="1" name="x" descr="A hen"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData><a:blip r:embed="rId9"/></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"#;
    let bad = docx_with(
        body,
        &[
            ("word/_rels/document.xml.rels", rels.as_bytes()),
            ("word/media/image1.png", b"\x89PNG\r\n\x1a\nnot really"),
        ],
    );
    assert!(matches!(
        read_err(&bad, &Limits::default()),
        InputError::BadImage { .. }
    ));

    let mut emf = vec![0x01, 0, 0, 0];
    emf.resize(40, 0);
    emf.extend_from_slice(b" EMF");
    emf.resize(100, 0);
    let dropped = docx_with(
        body,
        &[
            ("word/_rels/document.xml.rels", rels.as_bytes()),
            ("word/media/image1.png", &emf),
        ],
    );
    let parsed = read(&dropped, &Limits::default()).expect("test input");
    assert!(parsed.document.images.is_empty());
    let warning = parsed
        .warnings
        .iter()
        .find(|w| w.code == "image_unsupported")
        .expect("test input");
    assert!(warning.message.contains("A hen"));
}

#[test]
fn the_novel_has_its_chapters_italics_and_metadata() {
    let started = std::time::Instant::now();
    let parsed =
        read(&docx("love-among-the-chickens.docx"), &Limits::default()).expect("test input");
    let elapsed = started.elapsed();
    println!("love-among-the-chickens.docx read in {elapsed:?}");
    let doc = &parsed.document;
    let titles: Vec<&str> = doc.chapters.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(titles.len(), 24, "{titles:?}");
    assert_eq!(&titles[..4], ["Dedication", "I", "II", "III"]);
    assert_eq!(titles[23], "XXIII");
    assert_eq!(
        doc.chapters[0].division,
        crate::document::Division::Dedication
    );
    assert_eq!(
        doc.metadata.title.as_deref(),
        Some("Love Among the Chickens")
    );
    assert_eq!(doc.metadata.authors, ["P. G. Wodehouse"]);
    // From the document's properties, which the generator filled from the front matter.
    assert_eq!(doc.metadata.language.as_deref(), Some("en-GB"));
    let mut italics = 0;
    let mut blocks: Vec<Block> = doc.chapters.iter().flat_map(|c| c.blocks.clone()).collect();
    crate::manuscript::tidy::visit_inlines(&mut blocks, &mut |inlines: &mut Vec<Inline>| {
        italics += inlines
            .iter()
            .filter(|i| matches!(i, Inline::Emphasis(_)))
            .count();
    });
    // As many as the Markdown the document was made from has.
    assert_eq!(italics, markdown_novel_emphasis());
    let scene_breaks = blocks
        .iter()
        .filter(|b| matches!(b, Block::SceneBreak))
        .count();
    assert_eq!(scene_breaks, 10);
    // Runs merge: no paragraph is a string of single-word text nodes.
    let Block::Paragraph { content, .. } = &doc.chapters[0].blocks[1] else {
        panic!("{:?}", doc.chapters[0].blocks[1]);
    };
    assert_eq!(content, &[Inline::Text("To W. Townend".into())]);
}

/// How many emphasised spans the Markdown reader finds in the novel.
fn markdown_novel_emphasis() -> usize {
    let text = crate::test_support::fixture_text("markdown/love-among-the-chickens.md");
    let parsed = crate::manuscript::markdown::read(&text, &Limits::default()).expect("test input");
    let mut blocks: Vec<Block> = parsed
        .document
        .chapters
        .iter()
        .flat_map(|c| c.blocks.clone())
        .collect();
    let mut count = 0;
    crate::manuscript::tidy::visit_inlines(&mut blocks, &mut |inlines: &mut Vec<Inline>| {
        count += inlines
            .iter()
            .filter(|i| matches!(i, Inline::Emphasis(_)))
            .count();
    });
    count
}

/// A compact outline of blocks, for reading a conversion by eye (`DOCX_OUTLINE=name.docx`).
fn outline(blocks: &[Block], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for block in blocks {
        let line = match block {
            Block::Heading { level, id, content } => format!("H{level} {id:?} {content:?}"),
            Block::Paragraph { align, content } => format!("P {align:?} {content:?}"),
            Block::BlockQuote(inner) => {
                out.push_str(&format!("{pad}QUOTE\n"));
                outline(inner, depth + 1, out);
                continue;
            }
            Block::List { kind, start, items } => {
                out.push_str(&format!("{pad}LIST {kind:?} start={start}\n"));
                for item in items {
                    out.push_str(&format!("{pad}- item\n"));
                    outline(item, depth + 2, out);
                }
                continue;
            }
            Block::Table(t) => {
                out.push_str(&format!("{pad}TABLE caption={:?}\n", t.caption));
                for (head, row) in t
                    .head
                    .iter()
                    .map(|r| (true, r))
                    .chain(t.body.iter().map(|r| (false, r)))
                {
                    out.push_str(&format!("{pad} ROW head={head}\n"));
                    for cell in &row.cells {
                        out.push_str(&format!("{pad}  CELL {}x{}\n", cell.colspan, cell.rowspan));
                        outline(&cell.blocks, depth + 3, out);
                    }
                }
                continue;
            }
            other => format!("{other:?}"),
        };
        out.push_str(&format!("{pad}{line}\n"));
    }
}

#[test]
fn print_outline() {
    let Ok(name) = std::env::var("DOCX_OUTLINE") else {
        return;
    };
    let parsed = read(&docx(&name), &Limits::default()).expect("test input");
    let mut out = format!("{:?}\n", parsed.document.metadata);
    for chapter in &parsed.document.chapters {
        out.push_str(&format!(
            "== CHAPTER {:?} {:?}\n",
            chapter.title, chapter.division
        ));
        outline(&chapter.blocks, 1, &mut out);
    }
    for note in &parsed.document.notes {
        out.push_str(&format!("== NOTE {} {:?}\n", note.id, note.kind));
        outline(&note.blocks, 1, &mut out);
    }
    out.push_str(&format!("images {:?}\n", parsed.document.images));
    for w in &parsed.warnings {
        out.push_str(&format!("WARN {} {}\n", w.code, w.message));
    }
    println!("{out}");
}

// ---- Features, on small crafted documents ----

fn body_doc(body: &str) -> Document {
    read(&docx_with(body, &[]), &Limits::default())
        .expect("test input")
        .document
}

fn p(text: &str) -> String {
    format!("<w:p><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
}

fn blocks(doc: &Document) -> Vec<Block> {
    doc.chapters.iter().flat_map(|c| c.blocks.clone()).collect()
}

#[test]
fn tracked_changes_keep_insertions_and_drop_deletions() {
    let doc = body_doc(concat!(
        "<w:p><w:r><w:t xml:space=\"preserve\">kept </w:t></w:r>",
        "<w:ins><w:r><w:t>inserted </w:t></w:r></w:ins>",
        "<w:del><w:r><w:delText>deleted </w:delText></w:r></w:del>",
        "<w:moveFrom><w:r><w:t>moved-away </w:t></w:r></w:moveFrom>",
        "<w:moveTo><w:r><w:t>moved-here</w:t></w:r></w:moveTo></w:p>",
    ));
    assert_eq!(all_text(&doc), "kept inserted moved-here\n");
}

#[test]
fn fields_show_their_result_not_their_instruction() {
    let doc = body_doc(concat!(
        "<w:p><w:r><w:t xml:space=\"preserve\">See </w:t></w:r>",
        "<w:r><w:fldChar w:fldCharType=\"begin\"/></w:r>",
        "<w:r><w:instrText xml:space=\"preserve\"> HYPERLINK \"https://example.com\" </w:instrText></w:r>",
        "<w:r><w:fldChar w:fldCharType=\"separate\"/></w:r>",
        "<w:r><w:t>the site</w:t></w:r>",
        "<w:r><w:fldChar w:fldCharType=\"end\"/></w:r>",
        "<w:r><w:t xml:space=\"preserve\"> (</w:t></w:r>",
        "<w:fldSimple w:instr=\" ADDIN ZOTERO_ITEM {}\"><w:r><w:t>Smith 2020</w:t></w:r></w:fldSimple>",
        "<w:r><w:t>)</w:t></w:r></w:p>",
    ));
    let Block::Paragraph { content, .. } = &blocks(&doc)[0] else {
        panic!()
    };
    assert_eq!(
        content,
        &[
            Inline::Text("See ".into()),
            Inline::Link {
                target: crate::document::LinkTarget::External("https://example.com".into()),
                content: vec![Inline::Text("the site".into())],
            },
            Inline::Text(" (Smith 2020)".into()),
        ]
    );
}

#[test]
fn content_controls_text_boxes_and_alternate_content_are_read_once() {
    let doc = body_doc(&format!(
        "<w:sdt><w:sdtPr><w:alias w:val=\"x\"/></w:sdtPr><w:sdtContent>{}</w:sdtContent></w:sdt>{}",
        p("In a control."),
        concat!(
            "<w:p><w:r><w:t>Anchor.</w:t></w:r><w:r>",
            "<mc:AlternateContent xmlns:mc=\"http://schemas.openxmlformats.org/markup-compatibility/2006\">",
            "<mc:Choice Requires=\"wps\"><w:drawing><w:txbxContent><w:p><w:r><w:t>Boxed.</w:t></w:r></w:p></w:txbxContent></w:drawing></mc:Choice>",
            "<mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>Boxed.</w:t></w:r></w:p></w:txbxContent></w:pict></mc:Fallback>",
            "</mc:AlternateContent></w:r></w:p>"
        )
    ));
    assert_eq!(all_text(&doc), "In a control.\nAnchor.\nBoxed.\n");
}

#[test]
fn breaks_scene_breaks_and_drop_caps() {
    // A heading, so that page breaks are not taken for chapter breaks.
    let doc = body_doc(&[
        "<w:p><w:pPr><w:outlineLvl w:val=\"0\"/></w:pPr><w:r><w:t>Chapter</w:t></w:r></w:p>".into(),
        p("One"),
        "<w:p><w:r><w:t>Two</w:t><w:br/><w:t>lines</w:t><w:br w:type=\"page\"/><w:t>Three</w:t></w:r></w:p>".into(),
        p("* * *"),
        "<w:p><w:pPr><w:jc w:val=\"center\"/></w:pPr><w:r><w:t>❧</w:t></w:r></w:p>".into(),
        "<w:p><w:pPr><w:framePr w:dropCap=\"drop\" w:lines=\"3\"/></w:pPr><w:r><w:t>O</w:t></w:r></w:p>".into(),
        p("nce upon a time"),
        "<w:p/><w:p><w:r><w:t xml:space=\"preserve\">  </w:t></w:r></w:p>".into(),
        "<w:p><w:pPr><w:sectPr/></w:pPr><w:r><w:t>End of section</w:t></w:r></w:p>".into(),
        p("Next section"),
    ]
    .concat());
    let b = blocks(&doc)[1..].to_vec();
    let text = |t: &str| Block::Paragraph {
        align: Default::default(),
        content: vec![Inline::Text(t.into())],
    };
    assert_eq!(b[0], text("One"));
    assert_eq!(
        b[1],
        Block::Paragraph {
            align: Default::default(),
            content: vec![
                Inline::Text("Two".into()),
                Inline::LineBreak,
                Inline::Text("lines".into())
            ]
        }
    );
    assert_eq!(b[2], Block::PageBreak);
    assert_eq!(b[3], text("Three"));
    assert_eq!(b[4], Block::SceneBreak);
    assert_eq!(b[5], Block::SceneBreak);
    assert_eq!(b[6], text("Once upon a time"));
    assert_eq!(b[7], text("End of section"));
    assert_eq!(b[8], Block::PageBreak);
    assert_eq!(b[9], text("Next section"));
    assert_eq!(b.len(), 10);
}

#[test]
fn headings_by_outline_level_with_bookmark_ids_and_internal_links() {
    let doc = body_doc(&[
        "<w:p><w:pPr><w:outlineLvl w:val=\"0\"/></w:pPr><w:bookmarkStart w:id=\"1\" w:name=\"ch1\"/><w:r><w:t>Chapter One</w:t></w:r><w:bookmarkEnd w:id=\"1\"/></w:p>".to_owned(),
        "<w:p><w:hyperlink w:anchor=\"ch1\"><w:r><w:t>back</w:t></w:r></w:hyperlink><w:bookmarkStart w:id=\"2\" w:name=\"_Toc1\"/><w:bookmarkStart w:id=\"3\" w:name=\"_GoBack\"/></w:p>".to_owned(),
        "<w:p><w:pPr><w:outlineLvl w:val=\"0\"/></w:pPr><w:r><w:t>Chapter Two</w:t></w:r></w:p>".to_owned(),
    ]
    .concat());
    assert_eq!(doc.chapters.len(), 2);
    assert!(
        matches!(&doc.chapters[0].blocks[0], Block::Heading { level: 1, id: Some(id), .. } if id == "ch1")
    );
    // The unused `_Toc1` bookmark is gone; the link stays.
    assert!(
        matches!(&doc.chapters[0].blocks[1], Block::Paragraph { content, .. } if content.len() == 1)
    );
}

#[test]
fn footnotes_and_endnotes_are_notes_in_reading_order_without_separators() {
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes" Target="footnotes.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes" Target="endnotes.xml"/></Relationships>"#;
    let w = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
    let footnotes = format!(
        r#"<w:footnotes {w}><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote><w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> A footnote.</w:t></w:r></w:p></w:footnote><w:footnote w:id="7"><w:p><w:r><w:t>Never referenced.</w:t></w:r></w:p></w:footnote></w:footnotes>"#
    );
    let endnotes = format!(
        r#"<w:endnotes {w}><w:endnote w:id="1"><w:p><w:r><w:t>An endnote.</w:t></w:r></w:p></w:endnote></w:endnotes>"#
    );
    let bytes = docx_with(
        "<w:p><w:r><w:t>Text</w:t></w:r><w:r><w:endnoteReference w:id=\"1\"/></w:r><w:r><w:t>more</w:t></w:r><w:r><w:footnoteReference w:id=\"1\"/></w:r></w:p>",
        &[
            ("word/_rels/document.xml.rels", rels.as_bytes()),
            ("word/footnotes.xml", footnotes.as_bytes()),
            ("word/endnotes.xml", endnotes.as_bytes()),
        ],
    );
    let doc = read(&bytes, &Limits::default())
        .expect("test input")
        .document;
    let ids: Vec<&str> = doc.notes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["en1", "fn1"]);
    assert_eq!(plain_text(&doc.notes[1].blocks), "A footnote.\n");
}

#[test]
fn styles_make_headings_quotes_code_and_lists() {
    let w = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/></Relationships>"#;
    let styles = format!(
        r#"<w:styles {w}><w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="Quote"><w:name w:val="Quote"/><w:rPr><w:i/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="SourceCode"><w:name w:val="Source Code"/></w:style><w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="2"/></w:numPr></w:pPr></w:style></w:styles>"#
    );
    let numbering = format!(
        r#"<w:numbering {w}><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num></w:numbering>"#
    );
    let sp = |style: &str, text: &str| {
        format!(
            "<w:p><w:pPr><w:pStyle w:val=\"{style}\"/></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"
        )
    };
    let body = [
        sp("berschrift1", "Kapitel"),
        sp("Quote", "Said"),
        sp("Quote", "twice"),
        sp("SourceCode", "fn main() {"),
        sp("SourceCode", "}"),
        sp("ListBullet", "a"),
        sp("ListBullet", "b"),
    ]
    .concat();
    let bytes = docx_with(
        &body,
        &[
            ("word/_rels/document.xml.rels", rels.as_bytes()),
            ("word/styles.xml", styles.as_bytes()),
            ("word/numbering.xml", numbering.as_bytes()),
        ],
    );
    let b = blocks(
        &read(&bytes, &Limits::default())
            .expect("test input")
            .document,
    );
    // A numbered heading is a heading, and its style's bold is not emphasis.
    assert_eq!(
        b[0],
        Block::Heading {
            level: 1,
            id: None,
            content: vec![Inline::Text("Kapitel".into())]
        }
    );
    assert!(matches!(&b[1], Block::BlockQuote(q) if q.len() == 2));
    assert_eq!(
        b[2],
        Block::CodeBlock {
            language: None,
            text: "fn main() {\n}".into()
        }
    );
    assert!(
        matches!(&b[3], Block::List { kind: crate::document::ListKind::Bullet, items, .. } if items.len() == 2)
    );
    assert_eq!(b.len(), 4);
}

/// Each feature fixture (see `tests/fixtures/README.md`) still brings the reader what it was
/// made for, so that the sweeps over it keep covering those features.
#[test]
fn the_feature_fixtures_hold_their_features() {
    use crate::document::{ListKind, NoteKind};
    let parse = |name: &str| read(&docx(name), &Limits::default()).expect(name);

    let notes = parse("notes.docx").document;
    let kinds: Vec<(&str, NoteKind)> = notes
        .notes
        .iter()
        .map(|n| (n.id.as_str(), n.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("fn1", NoteKind::Footnote),
            ("fn2", NoteKind::Footnote),
            ("en1", NoteKind::Endnote)
        ]
    );
    assert_eq!(notes.notes[1].blocks.len(), 2, "a note of two paragraphs");

    let mut lists = Vec::new();
    let mut collect = |blocks: &[Block]| {
        for block in blocks {
            if let Block::List { kind, start, .. } = block {
                lists.push((*kind, *start));
            }
        }
    };
    collect(&blocks(&parse("lists.docx").document));
    assert_eq!(
        lists,
        [
            (ListKind::Bullet, 1),
            (ListKind::Decimal, 1),
            (ListKind::Decimal, 4),
            (ListKind::Decimal, 1),
            (ListKind::Bullet, 1),
            (ListKind::Decimal, 1),
            (ListKind::Bullet, 1)
        ],
        "continued at 4, restarted at 1, a German list style"
    );

    let tables: Vec<_> = blocks(&parse("tables.docx").document)
        .into_iter()
        .filter_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(tables.len(), 3);
    assert_eq!(
        tables[0].caption,
        [Inline::Text("Table 1: Eggs laid by breed".into())]
    );
    let spans: Vec<(u32, u32)> = tables[0].head[0]
        .cells
        .iter()
        .map(|c| (c.colspan, c.rowspan))
        .collect();
    assert_eq!(spans, [(1, 2), (2, 1)]);
    assert!(matches!(
        tables[2].body[0].cells[1].blocks[0],
        Block::List { .. }
    ));

    let images = parse("images.docx");
    assert_eq!(images.document.images.len(), 3, "inline, alone and VML");

    let fields = all_text(&parse("fields-and-controls.docx").document);
    for kept in [
        "(Wright 1902), page 3.",
        "in a control in a control.",
        "filled in.",
        "Text inside an oval.",
        "Aurora Leghorn two",
        "It was a bright morning",
        "A well\u{2011}known breed",
    ] {
        assert!(fields.contains(kept), "lost {kept}: {fields}");
    }

    let headings = parse("headings-and-properties.docx").document;
    let titles: Vec<&str> = headings.chapters.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "First Part",
            "Zweiter Teil",
            "Third Part, by Outline Level",
            "Numbered Heading"
        ]
    );
    let m = &headings.metadata;
    assert_eq!(m.title.as_deref(), Some("Headings and Properties"));
    assert_eq!(m.subtitle.as_deref(), Some("A Subtitle for the Book"));
    assert_eq!(m.authors, ["Ada Writer", "Ben Writer"]);
    assert_eq!(m.language.as_deref(), Some("en-GB"));
    assert_eq!(m.subjects, ["Poultry", "hens", "farming"]);

    let changes = all_text(&parse("tracked-changes.docx").document);
    assert!(changes.contains("The farm had nearly forty hens."));
    assert!(changes.contains("Money was short. Eggs were scarce."));
    assert!(!changes.contains("sickly") && !changes.contains("struck out"));
}

#[test]
fn comments_are_counted_in_one_warning() {
    let parsed = read(&docx("comments.docx"), &Limits::default()).expect("test input");
    assert_eq!(
        all_text(&parsed.document),
        "Comments\nThe hens were restless all morning. Nobody knew why.\nBy noon the rooster had gone quiet too, which worried everyone more.\nThen the rain came, and the yard emptied.\n"
    );
    let comments: Vec<_> = parsed
        .warnings
        .iter()
        .filter(|w| w.code == "comment_dropped")
        .collect();
    assert_eq!(comments.len(), 1);
    assert!(comments[0].message.starts_with("5 comments"));
}

#[test]
fn an_image_drawn_twice_for_compatibility_appears_once() {
    let parsed = read(&docx("image-in-text-box.docx"), &Limits::default()).expect("test input");
    assert_eq!(parsed.document.images.len(), 1);
    assert_eq!(parsed.resources.len(), 1);
    let figures = blocks(&parsed.document)
        .iter()
        .filter(|b| matches!(b, Block::Figure { .. }))
        .count();
    assert_eq!(figures, 1);
}

#[test]
fn the_main_part_is_found_through_relationships_and_any_prefix() {
    let doc = read(&docx("prefixed-package.docx"), &Limits::default())
        .expect("test input")
        .document;
    assert_eq!(all_text(&doc), "Prefixed text.\n");
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="/content/main.xml"/></Relationships>"#;
    let main = format!("{DOC_START}{}{DOC_END}", p("Elsewhere"));
    let bytes = zip(&[
        ("_rels/.rels", rels.as_bytes()),
        ("content/main.xml", main.as_bytes()),
    ]);
    assert_eq!(
        all_text(
            &read(&bytes, &Limits::default())
                .expect("test input")
                .document
        ),
        "Elsewhere\n"
    );
}

/// Lower-cased alphanumeric words.
fn words(text: &str) -> std::collections::HashMap<String, usize> {
    let mut out = std::collections::HashMap::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *out.entry(word.to_lowercase()).or_insert(0) += 1;
    }
    out
}

/// Pandoc's plain text without what is not the author's text: list markers and note marks.
/// Equations are left out: pandoc writes them as TeX, the model holds MathML, and
/// `omml::tests` and `tests/it/math.rs` check their symbols.
fn pandoc_words(path: &Path) -> Option<std::collections::HashMap<String, usize>> {
    let filter = tempfile::Builder::new().suffix(".lua").tempfile().ok()?;
    std::fs::write(filter.path(), "function Math(el) return {} end\n").ok()?;
    let output = std::process::Command::new("pandoc")
        .args(["-t", "plain", "--wrap=none", "--lua-filter"])
        .arg(filter.path())
        .arg(path)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut cleaned = String::new();
    for line in text.lines() {
        for (i, cell) in line.split('|').enumerate() {
            if i > 0 {
                cleaned.push(' ');
            }
            let trimmed = cell.trim_start();
            let marker = trimmed
                .split_once(['.', ')'])
                .filter(|(m, rest)| {
                    !m.is_empty()
                        && m.len() <= 4
                        && m.chars().all(|c| c.is_ascii_alphanumeric())
                        && (m.chars().all(|c| c.is_ascii_digit())
                            || m.len() == 1
                            || m.chars().all(|c| "ivxlcIVXLC".contains(c)))
                        && rest.starts_with(' ')
                })
                .map(|(m, _)| m.len() + 1);
            let cell = marker.map_or(trimmed, |n| &trimmed[n..]);
            // Note marks: `[1]`.
            let mut rest = cell;
            while let Some(open) = rest.find('[') {
                cleaned.push_str(&rest[..open]);
                let after = &rest[open + 1..];
                match after.find(']') {
                    Some(close)
                        if after[..close].chars().all(|c| c.is_ascii_digit()) && close > 0 =>
                    {
                        rest = &after[close + 1..];
                    }
                    _ => {
                        cleaned.push('[');
                        rest = after;
                    }
                }
            }
            cleaned.push_str(rest);
        }
        cleaned.push('\n');
    }
    Some(words(&cleaned))
}

/// Every word pandoc finds is in the book too (headings that became the title count: they
/// are in the metadata). Runs only where pandoc is installed.
#[test]
fn no_word_pandoc_finds_is_lost() {
    if std::process::Command::new("pandoc")
        .arg("--version")
        .output()
        .is_err()
    {
        return;
    }
    // Word joins a paragraph whose mark was deleted to the next one ("split" +
    // "Paragraph." reads "splitParagraph."); pandoc keeps them apart.
    let known = ["paragraph_insertion_deletion", "tracked-changes"];
    let mut failures = Vec::new();
    for path in every_docx() {
        let name = path
            .file_stem()
            .expect("test input")
            .to_string_lossy()
            .into_owned();
        if known.contains(&name.as_str()) {
            continue;
        }
        let Some(expected) = pandoc_words(&path) else {
            return;
        };
        let parsed = read(
            &std::fs::read(&path).expect("test input"),
            &Limits::default(),
        )
        .expect("test input");
        let mut text = all_text(&parsed.document);
        let mut all: Vec<Block> = parsed
            .document
            .chapters
            .iter()
            .flat_map(|c| c.blocks.clone())
            .collect();
        let mut alts = Vec::new();
        collect_alts(&mut all, &mut alts);
        text.push_str(&alts.join("\n"));
        text.push('\n');
        text.push_str(parsed.document.metadata.title.as_deref().unwrap_or(""));
        let got = words(&text);
        let missing: Vec<_> = expected
            .iter()
            .filter(|(w, n)| got.get(*w).copied().unwrap_or(0) < **n)
            .map(|(w, _)| w.clone())
            .collect();
        if !missing.is_empty() {
            failures.push(format!("{name}: {missing:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

// ---- Book limits, checked while reading ----

#[test]
fn an_amplified_document_stops_at_the_word_limit_while_it_is_read() {
    let paragraph = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "word ".repeat(100));
    let body = paragraph.repeat(2_000);
    let bytes = docx_with(&body, &[]);
    assert!(bytes.len() * 50 < body.len(), "the archive amplifies");
    let limits = Limits {
        max_words: 50_000,
        ..Limits::default()
    };
    assert_eq!(
        read_err(&bytes, &limits),
        InputError::TooManyWords { limit: 50_000 }
    );
    assert!(read(&bytes, &Limits::default()).is_ok());
}

#[test]
fn markup_without_words_stops_at_the_element_limit() {
    // Empty paragraphs and breaks: no words, but each is a node of the model.
    let body = "<w:p><w:r><w:t>x</w:t><w:br/><w:br/></w:r></w:p><w:p/>".repeat(10_000);
    let limits = Limits {
        max_elements: 20_000,
        ..Limits::default()
    };
    assert_eq!(
        read_err(&docx_with(&body, &[]), &limits),
        InputError::TooManyElements { limit: 20_000 }
    );
}

#[test]
fn word_equations_become_mathml_in_their_paragraphs() {
    let m = "http://schemas.openxmlformats.org/officeDocument/2006/math";
    let doc = body_doc(&format!(
        concat!(
            "<w:p><w:r><w:t xml:space=\"preserve\">Inline </w:t></w:r>",
            "<m:oMath xmlns:m=\"{m}\"><m:sSup><m:e><m:r><w:rPr><w:i/></w:rPr><m:t>x</m:t></m:r></m:e>",
            "<m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath>",
            "<w:r><w:t xml:space=\"preserve\"> here.</w:t></w:r></w:p>",
            "<w:p><m:oMathPara xmlns:m=\"{m}\"><m:oMath><m:r><m:t>a=b</m:t></m:r></m:oMath></m:oMathPara></w:p>"
        ),
        m = m
    ));
    let blocks = blocks(&doc);
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let Block::Paragraph { content, .. } = &blocks[0] else {
        panic!("{blocks:?}");
    };
    assert_eq!(content[0], Inline::Text("Inline ".into()));
    let Inline::Math(inline) = &content[1] else {
        panic!("{content:?}");
    };
    assert!(!inline.display);
    assert_eq!(
        inline.mathml.as_deref(),
        Some(
            "<math xmlns=\"http://www.w3.org/1998/Math/MathML\"><mrow><msup><mrow><mi>x</mi></mrow><mrow><mn>2</mn></mrow></msup></mrow></math>"
        )
    );
    assert_eq!(content[2], Inline::Text(" here.".into()));
    // A paragraph that is only a displayed equation is kept.
    let Block::Paragraph { content, .. } = &blocks[1] else {
        panic!("{blocks:?}");
    };
    assert!(matches!(&content[..], [Inline::Math(m)] if m.display));
}
