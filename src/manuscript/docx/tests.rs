//! The reader against real documents (the shared corpus) and crafted hostile archives.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::read;
use crate::document::{Block, Document, Inline, plain_text};
use crate::manuscript::{InputError, Limits};

/// The shared corpus: `BINDERY_CORPUS`, or the first `shared/corpus` above the crate.
fn corpus() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BINDERY_CORPUS") {
        return Some(PathBuf::from(dir));
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("shared/corpus"))
        .find(|d| d.is_dir())
}

fn docx(name: &str) -> Vec<u8> {
    let dir = corpus().expect("the shared corpus");
    std::fs::read(dir.join("docx").join(name)).expect(name)
}

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
    let Ok(name) = std::env::var("DOCX_DUMP") else { return };
    let parsed = read(&docx(&name), &Limits::default()).unwrap();
    println!("{:#?}", parsed.document);
    println!("{:#?}", parsed.warnings);
    println!("---\n{}", all_text(&parsed.document));
}

#[test]
fn every_corpus_document_reads_with_text() {
    let Some(dir) = corpus() else { return };
    let mut count = 0;
    for entry in std::fs::read_dir(dir.join("docx")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "docx") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let parsed = read(&bytes, &Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert!(!parsed.document.chapters.is_empty(), "{}", path.display());
        assert!(
            all_text(&parsed.document).chars().any(char::is_alphanumeric),
            "{}",
            path.display()
        );
        count += 1;
    }
    assert!(count >= 40, "only {count} corpus documents");
}

/// Writes each corpus document's text to `$DOCX_TEXT_DIR/NAME.txt`, for comparing with pandoc.
#[test]
fn export_text() {
    let (Some(dir), Some(out)) = (corpus(), std::env::var_os("DOCX_TEXT_DIR")) else {
        return;
    };
    for entry in std::fs::read_dir(dir.join("docx")).unwrap() {
        let path = entry.unwrap().path();
        let parsed = read(&std::fs::read(&path).unwrap(), &Limits::default()).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        // Pandoc's plain text includes images' alt text.
        let mut text = all_text(&parsed.document);
        let mut alts = Vec::new();
        let mut blocks: Vec<Block> = parsed.document.chapters.iter().flat_map(|c| c.blocks.clone()).collect();
        collect_alts(&mut blocks, &mut alts);
        text.push_str(&alts.join("\n"));
        std::fs::write(Path::new(&out).join(name + ".txt"), text).unwrap();
    }
}

fn collect_alts(blocks: &mut [Block], alts: &mut Vec<String>) {
    for block in blocks.iter() {
        if let Block::Figure { alt, .. } = block {
            alts.push(alt.clone());
        }
    }
    super::tidy::visit_inlines(blocks, &mut |inlines: &mut Vec<Inline>| {
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
        out.start_file(*name, options).unwrap();
        out.write_all(data).unwrap();
    }
    out.finish().unwrap().into_inner()
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
    assert!(matches!(read_err(truncated, &Limits::default()), InputError::CorruptZip { .. }));
    assert!(matches!(read_err(b"PK\x03\x04garbage", &Limits::default()), InputError::CorruptZip { .. }));
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
        InputError::TooManyEntries { entries: 20, limit: 10 }
    ));
}

#[test]
fn unsafe_entry_names_are_refused_wherever_they_are() {
    for name in ["../evil.xml", "/etc/passwd", "C:/windows/x", "word/../../x"] {
        let bytes = docx_with("<w:p><w:r><w:t>Hi</w:t></w:r></w:p>", &[(name, b"x")]);
        assert!(
            matches!(read_err(&bytes, &Limits::default()), InputError::UnsafePath { .. }),
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
    let bytes = docx_with("<w:p><w:r><w:t>Hi</w:t></w:r></w:p>", &[("word/media/big.bin", &big)]);
    assert!(matches!(read_err(&bytes, &limits), InputError::ZipBomb { .. }));

    // Declared small, inflates big: patch the sizes in the local and central headers.
    let mut bytes = zip(&[("_rels/.rels", ROOT_RELS.as_bytes()), ("word/document.xml", &big)]);
    let declared = (big.len() as u32).to_le_bytes();
    let small = 10u32.to_le_bytes();
    let mut i = 0;
    while let Some(p) = bytes[i..].windows(4).position(|w| w == declared) {
        bytes[i + p..i + p + 4].copy_from_slice(&small);
        i += p + 4;
    }
    let err = read_err(&bytes, &limits);
    assert!(
        matches!(err, InputError::ZipBomb { .. }),
        "{err:?}"
    );

    // Many small entries over the total.
    let parts: Vec<String> = (0..6).map(|i| format!("word/media/{i}.bin")).collect();
    let chunk = vec![b'a'; 10_000];
    let mut entries: Vec<(&str, &[u8])> = parts.iter().map(|p| (p.as_str(), chunk.as_slice())).collect();
    entries.push(("_rels/.rels", ROOT_RELS.as_bytes()));
    let bytes = zip(&entries);
    assert!(matches!(read_err(&bytes, &limits), InputError::ZipBomb { .. }));
}

#[test]
fn a_doctype_anywhere_is_refused() {
    let doc = format!(
        r#"<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>{}<w:p><w:r><w:t>&lol2;</w:t></w:r></w:p>{DOC_END}"#,
        &DOC_START[DOC_START.find("<w:document").unwrap()..]
    );
    let bytes = zip(&[("_rels/.rels", ROOT_RELS.as_bytes()), ("word/document.xml", doc.as_bytes())]);
    assert!(matches!(read_err(&bytes, &Limits::default()), InputError::XmlDoctype { .. }));
}

#[test]
fn malformed_xml_and_unknown_entities_are_xml_errors() {
    let bytes = docx_with("<w:p><w:r><w:t>Hi</w:r></w:p>", &[]);
    assert!(matches!(read_err(&bytes, &Limits::default()), InputError::Xml { part, .. } if part == "word/document.xml"));
    let bytes = docx_with("<w:p><w:r><w:t>&xxe;</w:t></w:r></w:p>", &[]);
    assert!(matches!(read_err(&bytes, &Limits::default()), InputError::Xml { .. }));
}

#[test]
fn an_image_that_is_not_an_image_fails_and_emf_is_dropped_with_a_warning() {
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.png"/></Relationships>"#;
    let body = r#"<w:p><w:r><w:t>Text</w:t></w:r></w:p><w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:docPr id="1" name="x" descr="A hen"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData><a:blip r:embed="rId9"/></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"#;
    let bad = docx_with(
        body,
        &[("word/_rels/document.xml.rels", rels.as_bytes()), ("word/media/image1.png", b"\x89PNG\r\n\x1a\nnot really")],
    );
    assert!(matches!(read_err(&bad, &Limits::default()), InputError::BadImage { .. }));

    let mut emf = vec![0x01, 0, 0, 0];
    emf.resize(40, 0);
    emf.extend_from_slice(b" EMF");
    emf.resize(100, 0);
    let dropped = docx_with(
        body,
        &[("word/_rels/document.xml.rels", rels.as_bytes()), ("word/media/image1.png", &emf)],
    );
    let parsed = read(&dropped, &Limits::default()).unwrap();
    assert!(parsed.document.images.is_empty());
    let warning = parsed.warnings.iter().find(|w| w.code == "image_unsupported").unwrap();
    assert!(warning.message.contains("A hen"));
}

#[test]
fn the_novel_has_its_chapters_italics_and_metadata() {
    if corpus().is_none() {
        return;
    }
    let started = std::time::Instant::now();
    let parsed = read(&docx("love-among-the-chickens.docx"), &Limits::default()).unwrap();
    let elapsed = started.elapsed();
    println!("love-among-the-chickens.docx read in {elapsed:?}");
    let doc = &parsed.document;
    let titles: Vec<&str> = doc.chapters.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(titles.len(), 24, "{titles:?}");
    assert_eq!(&titles[..4], ["Dedication", "I", "II", "III"]);
    assert_eq!(titles[23], "XXIII");
    assert_eq!(doc.chapters[0].division, crate::document::Division::Dedication);
    assert_eq!(doc.metadata.title.as_deref(), Some("Love Among the Chickens"));
    assert_eq!(doc.metadata.authors, ["P. G. Wodehouse"]);
    assert_eq!(doc.metadata.language.as_deref(), Some("en-US"));
    let mut italics = 0;
    let mut blocks: Vec<Block> = doc.chapters.iter().flat_map(|c| c.blocks.clone()).collect();
    super::tidy::visit_inlines(&mut blocks, &mut |inlines: &mut Vec<Inline>| {
        italics += inlines.iter().filter(|i| matches!(i, Inline::Emphasis(_))).count();
    });
    // As many as pandoc finds.
    assert_eq!(italics, 83);
    let scene_breaks = blocks.iter().filter(|b| matches!(b, Block::SceneBreak)).count();
    assert_eq!(scene_breaks, 10);
    // Runs merge: no paragraph is a string of single-word text nodes.
    let Block::Paragraph { content, .. } = &doc.chapters[0].blocks[1] else {
        panic!("{:?}", doc.chapters[0].blocks[1]);
    };
    assert_eq!(content, &[Inline::Text("To W. Townend".into())]);
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
                for (head, row) in t.head.iter().map(|r| (true, r)).chain(t.body.iter().map(|r| (false, r))) {
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
    let Ok(name) = std::env::var("DOCX_OUTLINE") else { return };
    let parsed = read(&docx(&name), &Limits::default()).unwrap();
    let mut out = format!("{:?}\n", parsed.document.metadata);
    for chapter in &parsed.document.chapters {
        out.push_str(&format!("== CHAPTER {:?} {:?}\n", chapter.title, chapter.division));
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
