//! The fuzzers' saved corpus (`fuzz/corpus/<target>/`), replayed through the same entry
//! points on every `cargo test`, so an input that once broke a reader, or reached a corner
//! of it, keeps being checked without a nightly toolchain. And the seeds the corpus grew
//! from, written on request.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::TARGETS;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

/// The fuzzers ran with `-timeout=10` on optimised builds; an unoptimised test build is
/// slower, so this only catches an input that has gone from milliseconds to unbounded.
const SLOWEST: Duration = Duration::from_secs(10);

#[test]
fn every_saved_fuzz_input_is_read_without_panicking() {
    for (target, entry) in TARGETS {
        let dir = corpus_dir(target);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("test input").path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{} has no inputs", dir.display());
        let mut accepted = 0;
        for path in &files {
            let bytes = std::fs::read(path).expect("test input");
            let started = Instant::now();
            accepted += usize::from(entry(&bytes).is_ok());
            let took = started.elapsed();
            assert!(took < SLOWEST, "{} took {took:?}", path.display());
        }
        // A corpus of nothing but rejected inputs would only exercise the first checks.
        assert!(accepted > 0, "no input of {target} was accepted");
    }
}

/// Writes the seed inputs the corpus started from into `$FUZZ_SEEDS_DIR/<target>/`:
/// small documents that reach each reader's features, made by the same crates the tests
/// use. `scripts/fuzz seeds` runs it; the fuzzer does the rest.
#[test]
fn write_seeds() {
    let Some(out) = std::env::var_os("FUZZ_SEEDS_DIR") else {
        return;
    };
    let out = PathBuf::from(out);
    let docx = docx_seeds();
    for (target, seeds) in [
        (
            "docx",
            docx.iter()
                .map(|(name, entries)| (*name, zip(entries)))
                .collect(),
        ),
        (
            "docx_parts",
            docx.iter()
                .map(|(name, entries)| (*name, joined(entries)))
                .collect(),
        ),
        ("markdown", markdown_seeds()),
        ("front_matter", front_matter_seeds()),
        ("text", text_seeds()),
        ("image", image_seeds()),
    ] {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).expect("seed directory");
        for (name, bytes) in seeds {
            std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed");
        }
    }
}

const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships""#;
const RELS_NS: &str = "http://schemas.openxmlformats.org/package/2006/relationships";
const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

fn zip(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        out.start_file(*name, options).expect("seed");
        out.write_all(data).expect("seed");
    }
    out.finish().expect("seed").into_inner()
}

/// The parts of a document with `body`, its relationships (kind, target) and extra parts.
fn docx<'a>(
    body: &str,
    rels: &[(&str, &str)],
    parts: &[(&'a str, Vec<u8>)],
) -> Vec<(&'a str, Vec<u8>)> {
    let root = format!(
        r#"<?xml version="1.0"?><Relationships xmlns="{RELS_NS}"><Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>"#
    );
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W}><w:body>{body}</w:body></w:document>"#
    );
    let rels: String = rels
        .iter()
        .enumerate()
        .map(|(i, (kind, target))| {
            format!(
                r#"<Relationship Id="rId{}" Type="{REL}/{kind}" Target="{target}"/>"#,
                i + 1
            )
        })
        .collect();
    let mut entries = vec![
        ("_rels/.rels", root.into_bytes()),
        ("word/document.xml", document.into_bytes()),
        (
            "word/_rels/document.xml.rels",
            format!(r#"<Relationships xmlns="{RELS_NS}">{rels}</Relationships>"#).into_bytes(),
        ),
    ];
    entries.extend(parts.iter().cloned());
    entries
}

/// The same parts as [`super::docx_parts`] takes them: in its order, at NUL bytes.
fn joined(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let part = |name: &str| {
        entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    };
    super::DOCX_PARTS.map(part).join(&0)
}

fn p(text: &str) -> String {
    format!(r#"<w:p><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#)
}

fn styled(style: &str, text: &str) -> String {
    format!(r#"<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"#)
}

/// A document's parts by name.
type Parts = Vec<(&'static str, Vec<u8>)>;

fn docx_seeds() -> Vec<(&'static str, Parts)> {
    let styles = format!(
        r#"<w:styles {W}><w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="en-GB"/></w:rPr></w:rPrDefault></w:docDefaults><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Heading1"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style><w:style w:type="paragraph" w:styleId="Quote"><w:name w:val="Quote"/><w:rPr><w:i/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="2"/></w:numPr></w:pPr></w:style><w:style w:type="character" w:styleId="Emph"><w:name w:val="Emphasis"/><w:rPr><w:i/></w:rPr></w:style></w:styles>"#
    );
    let numbering = format!(
        r#"<w:numbering {W}><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="3"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="lowerRoman"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num></w:numbering>"#
    );
    let footnotes = format!(
        r#"<w:footnotes {W}><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote><w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> A footnote.</w:t></w:r></w:p></w:footnote></w:footnotes>"#
    );
    let endnotes = format!(
        r#"<w:endnotes {W}><w:endnote w:id="1"><w:p><w:r><w:t>An endnote.</w:t></w:r></w:p></w:endnote></w:endnotes>"#
    );
    let core = br#"<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"><dc:title>The Book</dc:title><dc:creator>Ann One; Bob Two</dc:creator><dc:language>fr-CA</dc:language><dcterms:created>2024-05-01T00:00:00Z</dcterms:created><dc:subject>Sea</dc:subject><dc:description>About it.</dc:description></cp:coreProperties>"#.to_vec();
    let rich_body = [
        styled("Title", "The Book"),
        styled("Heading1", "Chapter One"),
        r#"<w:p><w:r><w:rPr><w:b/><w:i/></w:rPr><w:t xml:space="preserve">Bold italic </w:t></w:r><w:r><w:rPr><w:rStyle w:val="Emph"/><w:vertAlign w:val="superscript"/></w:rPr><w:t>sup</w:t></w:r><w:r><w:rPr><w:strike/><w:smallCaps/><w:u w:val="single"/></w:rPr><w:t>struck</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r><w:r><w:endnoteReference w:id="1"/></w:r><w:r><w:tab/><w:t>Two</w:t><w:br/><w:t>lines</w:t><w:br w:type="page"/><w:sym w:font="Symbol" w:char="F0B7"/><w:noBreakHyphen/><w:softHyphen/></w:r></w:p>"#.to_owned(),
        styled("Quote", "A quotation."),
        r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>First</w:t></w:r></w:p><w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Nested</w:t></w:r></w:p>"#.to_owned(),
        styled("ListBullet", "A bullet"),
        styled("Heading2", "A section"),
        r##"<w:p><w:bookmarkStart w:id="0" w:name="here"/><w:r><w:t>Anchor.</w:t></w:r><w:bookmarkEnd w:id="0"/><w:hyperlink w:anchor="here"><w:r><w:t>back</w:t></w:r></w:hyperlink><w:hyperlink r:id="rId9"><w:r><w:t>the site</w:t></w:r></w:hyperlink><w:fldSimple w:instr=" PAGEREF here "><w:r><w:t>3</w:t></w:r></w:fldSimple><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> HYPERLINK "https://example.com/x" </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>field link</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>"##.to_owned(),
        r#"<w:tbl><w:tblPr><w:tblStyle w:val="Grid"/></w:tblPr><w:tr><w:trPr><w:tblHeader/></w:trPr><w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>Head</w:t></w:r></w:p></w:tc></w:tr><w:tr><w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p><w:pPr><w:jc w:val="center"/></w:pPr><w:r><w:t>A</w:t></w:r></w:p></w:tc><w:tc><w:tbl><w:tr><w:tc><w:p><w:r><w:t>inner</w:t></w:r></w:p></w:tc></w:tr></w:tbl><w:p/></w:tc></w:tr><w:tr><w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc><w:tc><w:p><w:r><w:t>B</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#.to_owned(),
        r#"<w:p><w:ins><w:r><w:t xml:space="preserve">inserted </w:t></w:r></w:ins><w:del><w:r><w:delText>deleted</w:delText></w:r></w:del><w:commentRangeStart w:id="0"/><w:r><w:t>commented</w:t></w:r><w:commentRangeEnd w:id="0"/><w:r><w:commentReference w:id="0"/></w:r><w:sdt><w:sdtPr><w:alias w:val="Author"/></w:sdtPr><w:sdtContent><w:r><w:t>Ann</w:t></w:r></w:sdtContent></w:sdt></w:p>"#.to_owned(),
        r#"<w:p><w:pPr><w:framePr w:dropCap="drop"/></w:pPr><w:r><w:t>O</w:t></w:r></w:p><w:p><w:r><w:t>nce upon a time.</w:t></w:r><w:r><w:pict><v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox><w:txbxContent><w:p><w:r><w:t>In a box</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></w:r></w:p>"#.to_owned(),
        r#"<w:p><w:pPr><w:jc w:val="center"/></w:pPr><w:r><w:t>* * *</w:t></w:r></w:p>"#.to_owned(),
        r#"<w:p><w:pPr><w:sectPr/></w:pPr><w:r><w:t>End of section</w:t></w:r></w:p><w:sectPr><w:pgSz w:w="12240" w:h="15840"/></w:sectPr>"#.to_owned(),
    ]
    .concat();
    let rich = docx(
        &rich_body,
        &[
            ("styles", "styles.xml"),
            ("numbering", "numbering.xml"),
            ("footnotes", "footnotes.xml"),
            ("endnotes", "endnotes.xml"),
        ],
        &[
            ("word/styles.xml", styles.clone().into_bytes()),
            ("word/numbering.xml", numbering.into_bytes()),
            ("word/footnotes.xml", footnotes.into_bytes()),
            ("word/endnotes.xml", endnotes.into_bytes()),
            ("docProps/core.xml", core),
        ],
    );
    // rId9 of the rich document is not declared on purpose; this one declares a link and
    // two images.
    let picture = |id: &str, descr: &str| {
        format!(
            r#"<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:extent cx="914400" cy="914400"/><wp:docPr id="1" name="x" descr="{descr}"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:blipFill><a:blip r:embed="{id}"/></pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"#
        )
    };
    let images_body = [
        p("Text before the pictures."),
        picture("rId1", "A hen"),
        styled("Caption", "Figure 1: A hen"),
        picture("rId2", "A flag"),
        r#"<w:p><w:hyperlink r:id="rId3"><w:r><w:t>a link</w:t></w:r></w:hyperlink></w:p>"#
            .to_owned(),
    ]
    .concat();
    let images = docx(
        &images_body,
        &[
            ("image", "media/image1.jpeg"),
            ("image", "media/image2.png"),
            ("hyperlink", "https://example.com/"),
        ],
        &[
            (
                "word/media/image1.jpeg",
                crate::test_support::sideways_photo(),
            ),
            ("word/media/image2.png", png(4, 3)),
        ],
    );
    let minimal = docx(&p("Hello, world."), &[], &[]);
    vec![("minimal", minimal), ("rich", rich), ("images", images)]
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 40) as u8, (y * 60) as u8, 128])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(picture)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("seed");
    out
}

fn encoded(picture: image::DynamicImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = Vec::new();
    picture
        .write_to(&mut std::io::Cursor::new(&mut out), format)
        .expect("seed");
    out
}

fn markdown_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let png = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, png(2, 2));
    let full = format!(
        "---\ntitle: The Book\nsubtitle: A Tale\nauthor:\n  - name: Ann One\n  - Bob Two\nlang: fr-CA\ndate: 2024-05-01\nkeywords: [sea, ships]\nseries: The Cycle\nseries-number: 2\n---\n\n\
         # Chapter One {{#one .class}}\n\nSome *emphasis*, **strong**, ~~struck~~, `code`, H~2~O, x^2^, \"quotes\" -- and... [a link](https://example.com \"t\"), [back](#one), [local](notes.md#one), <https://auto.link>, <a@b.c>.[^n]\n\n\
         [^n]: A footnote with *style*.\n\n> A quotation\n> > nested\n\n- one\n- two\n  1. nested\n  2. list\n- [x] task\n\n\
         Term\n: Definition\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\n```rust\nfn main() {{}}\n```\n\n    indented code\n\n\
         ![A dot](data:image/png;base64,{png} \"title\")\n\n<div class=\"x\"><p>Raw <em>HTML</em> <img src=\"data:image/png;base64,{png}\" alt=\"dot\"></p></div>\n\n\
         Inline <span>html</span><br>and $math$.\n\n***\n\n## Section\n\nText.\n\n# Chapter Two\n\n---\nlater: dashes\n---\n\n[ref]: https://example.com\n\n[ref] and [ref][] and [x][ref].\n"
    );
    vec![
        ("full.md", full.into_bytes()),
        (
            "pandoc.md",
            b"% The Title\n% Ann One; Bob Two\n% 2024\n\n# One\n\nText.\n".to_vec(),
        ),
        (
            "nested.md",
            b"> - > - > - > - > - > - > - > - > - deep\n\n1. a\n   - b\n     > c\n".to_vec(),
        ),
    ]
}

fn front_matter_seeds() -> Vec<(&'static str, Vec<u8>)> {
    [
        (
            "all.yaml",
            "title: The Book\nsubtitle: A Tale\nauthor: [Ann One, Bob Two]\nlang: fr-CA\nidentifier: 978-3-16-148410-0\npublisher: Small Press\ndate: 2024-05-01\ndescription: About it.\nsubject: [sea, ships]\ngenre: Fiction\nseries: The Cycle\nseries_number: 2\nrights: © 2024\n",
        ),
        (
            "pandoc.yaml",
            "author:\n  - name: Ann One\n  - name: Bob Two\ntitle:\n  - type: main\n    text: Main\n  - type: subtitle\n    text: Sub\nbelongs-to-collection: Saga\ngroup-position: 3\ncreator:\n  - role: author\n    text: Cy\n",
        ),
        (
            "styles.yaml",
            "title: |\n  Block\n  scalar\nauthor: >\n  folded\ndate: !!str 2024\n? complex\n: key\nlist:\n- 'single'\n- \"double \\u00e9\"\n- {a: 1, b: [2, 3]}\n...\n",
        ),
    ]
    .into_iter()
    .map(|(n, t)| (n, t.as_bytes().to_vec()))
    .collect()
}

fn text_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let novel = "THE BOOK\n\nby Ann One\n\n\nChapter 1\n\nIt was a dark night.\nThe rain fell.\n\n    An indented quotation,\n    two lines.\n\n* * *\n\nCHAPTER II: The Second\n\nMore text.\n\nChapter Three\n\nText.\n\nIV\n\nText.\n\nPrologue\n\nText.\n\nPart One\n\nFirst chapter\n\nText.\n";
    let utf16 = |big: bool, bom: bool| {
        let mut out = Vec::new();
        if bom {
            out.extend_from_slice(if big { &[0xFE, 0xFF] } else { &[0xFF, 0xFE] });
        }
        for unit in "Chapter 1\r\n\r\nCaf\u{e9} \u{1F600} text.\r\n".encode_utf16() {
            out.extend_from_slice(&if big {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        out
    };
    vec![
        ("novel.txt", novel.as_bytes().to_vec()),
        (
            "bom.txt",
            [&b"\xEF\xBB\xBF"[..], b"One\r\n\r\nTwo\rthree\n"].concat(),
        ),
        ("utf16le.txt", utf16(false, true)),
        ("utf16be-nobom.txt", utf16(true, false)),
        (
            "cp1252.txt",
            b"\x93Quoted\x94 caf\xe9 \x97 dash\n\nChapter One\n\nText.\x1A".to_vec(),
        ),
        (
            "looks-like-markdown.txt",
            b"# Heading\n\nSome *text* with a [link](x).\n".to_vec(),
        ),
    ]
}

fn image_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use image::{DynamicImage, ImageFormat, Rgba, RgbaImage};
    let small = DynamicImage::ImageRgba8(RgbaImage::from_fn(5, 4, |x, y| {
        Rgba([(x * 50) as u8, (y * 60) as u8, 100, 200])
    }));
    // Wider than a cover may be, so the scaling path runs, but small once compressed.
    let wide = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
        1700,
        8,
        image::Rgb([9, 80, 200]),
    ));
    vec![
        ("sideways.jpg", crate::test_support::sideways_photo()),
        ("small.png", encoded(small.clone(), ImageFormat::Png)),
        ("wide.png", encoded(wide.clone(), ImageFormat::Png)),
        ("wide.jpg", encoded(wide, ImageFormat::Jpeg)),
        ("small.gif", encoded(small.clone(), ImageFormat::Gif)),
        ("small.webp", encoded(small, ImageFormat::WebP)),
    ]
}
