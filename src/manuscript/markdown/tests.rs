#![allow(clippy::unwrap_used)]

use super::*;
use crate::document::{Cell, LinkTarget, plain_text};

fn parse(text: &str) -> Parsed {
    read(text, &Limits::default()).unwrap()
}

/// All blocks of all chapters, in order.
fn blocks(parsed: &Parsed) -> Vec<Block> {
    parsed
        .document
        .chapters
        .iter()
        .flat_map(|c| c.blocks.clone())
        .collect()
}

fn codes(parsed: &Parsed) -> Vec<&str> {
    parsed.warnings.iter().map(|w| w.code.as_str()).collect()
}

fn first_paragraph(parsed: &Parsed) -> Vec<Inline> {
    blocks(parsed)
        .into_iter()
        .find_map(|b| match b {
            Block::Paragraph { content, .. } => Some(content),
            _ => None,
        })
        .unwrap_or_default()
}

fn text(s: &str) -> Inline {
    Inline::Text(s.into())
}

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[test]
fn front_matter_fills_metadata_and_is_not_text() {
    let parsed = parse(
        "---\ntitle: The Book\nauthor:\n  - name: Ann One\nlang: fr\n---\n\n# One\n\nText.\n",
    );
    let m = &parsed.document.metadata;
    assert_eq!(m.title.as_deref(), Some("The Book"));
    assert_eq!(m.authors, ["Ann One"]);
    assert_eq!(m.language.as_deref(), Some("fr"));
    assert!(!plain_text(&blocks(&parsed)).contains("title"));
}

#[test]
fn invalid_front_matter_is_an_error() {
    let err = read("---\ntitle: [broken\n---\n\nText.\n", &Limits::default()).unwrap_err();
    assert_eq!(err.code(), "bad_front_matter");
}

#[test]
fn a_later_dashed_block_is_text_not_metadata() {
    let parsed = parse("---\ntitle: T\n---\n\nIntro.\n\n---\nkept words\n---\n");
    assert!(plain_text(&blocks(&parsed)).contains("kept words"));
    assert_eq!(parsed.document.metadata.title.as_deref(), Some("T"));
}

#[test]
fn pandoc_title_blocks_fill_metadata() {
    let parsed = parse("% My Title\n% Ann; Bob\n% 2006\n\nText.\n");
    let m = &parsed.document.metadata;
    assert_eq!(m.title.as_deref(), Some("My Title"));
    assert_eq!(m.authors, ["Ann", "Bob"]);
    assert_eq!(m.date.as_deref(), Some("2006"));
}

#[test]
fn headings_get_explicit_or_pandoc_ids_and_internal_links_resolve() {
    let parsed = parse(
        "# Chapter One\n\nSee [two](#custom) and [one](#chapter-one).\n\n# Chapter Two {#custom}\n\nText.\n",
    );
    let ids: Vec<_> = blocks(&parsed)
        .into_iter()
        .filter_map(|b| match b {
            Block::Heading { id, .. } => id,
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["chapter-one", "custom"]);
    let links: Vec<_> = first_paragraph(&parsed)
        .into_iter()
        .filter_map(|i| match i {
            Inline::Link { target, .. } => Some(target),
            _ => None,
        })
        .collect();
    assert_eq!(
        links,
        [
            LinkTarget::Internal("custom".into()),
            LinkTarget::Internal("chapter-one".into())
        ]
    );
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn duplicate_headings_get_numbered_ids() {
    let parsed = parse("## Notes\n\na\n\n## Notes\n\nb\n\n[second](#notes-1)\n");
    assert!(codes(&parsed).is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn links_keep_their_text_when_they_cannot_work() {
    let parsed = parse(
        "[web](https://example.com) [mail](mailto:a@b.c) [js](javascript:alert(1)) [file](other.md) \
         [same](notes.md#here) [gone](#nowhere)\n\n## Here\n",
    );
    let para = first_paragraph(&parsed);
    assert_eq!(
        para[0],
        Inline::Link {
            target: LinkTarget::External("https://example.com/".into()),
            content: vec![text("web")]
        }
    );
    assert!(
        matches!(&para[2], Inline::Link { target: LinkTarget::External(u), .. } if u == "mailto:a@b.c")
    );
    assert_eq!(para[3], text(" js file "));
    assert_eq!(
        para[4],
        Inline::Link {
            target: LinkTarget::Internal("here".into()),
            content: vec![text("same")]
        }
    );
    assert_eq!(para[5], text(" gone"));
    assert_eq!(
        codes(&parsed),
        ["link_dropped", "local_link_dropped", "link_target_missing"]
    );
}

#[test]
fn data_uri_images_are_embedded_and_a_lone_one_is_a_figure() {
    let md = format!(
        "![A dot](data:image/png;base64,{PNG} \"The caption\")\n\nInline ![dot](data:image/png;base64,{PNG}) here.\n"
    );
    let parsed = parse(&md);
    let b = blocks(&parsed);
    assert_eq!(
        b[0],
        Block::Figure {
            image: "image1.png".into(),
            alt: "A dot".into(),
            caption: vec![text("The caption")]
        }
    );
    // The same data is one image.
    assert!(
        matches!(&b[1], Block::Paragraph { content, .. } if content[1] == Inline::Image { image: "image1.png".into(), alt: "dot".into() })
    );
    assert_eq!(parsed.document.images.len(), 1);
    assert_eq!(parsed.document.images[0].media_type, "image/png");
    assert_eq!(
        (
            parsed.document.images[0].width,
            parsed.document.images[0].height
        ),
        (1, 1)
    );
    assert!(parsed.resources["image1.png"].starts_with(b"\x89PNG"));
}

#[test]
fn a_damaged_embedded_image_is_an_error() {
    let err = read("![x](data:image/png;base64,AAAAAAAA)\n", &Limits::default()).unwrap_err();
    assert_eq!(err.code(), "bad_image");
}

#[test]
fn images_that_cannot_be_fetched_keep_their_alt_text() {
    let parsed = parse("See ![a map](map.png) and ![a photo](https://example.com/p.jpg).\n");
    assert_eq!(first_paragraph(&parsed), [text("See a map and a photo.")]);
    assert_eq!(codes(&parsed), ["image_missing", "image_remote"]);
}

#[test]
fn scene_breaks_from_rules_and_ornament_paragraphs() {
    let parsed = parse("One.\n\n* * *\n\nTwo.\n\n⁂\n\nThree.\n\n#\n\nFour.\n");
    let breaks = blocks(&parsed)
        .iter()
        .filter(|b| **b == Block::SceneBreak)
        .count();
    assert_eq!(breaks, 3);
    assert_eq!(parsed.document.chapters.len(), 1);
}

#[test]
fn lists_quotes_code_and_breaks() {
    let parsed = parse(
        "> quoted\n\n3. three\n4. four\n   - nested\n\n- [x] done\n- [ ] todo\n\n```rust\nfn main() {}\n```\n\nline one  \nline two\nsoft\n",
    );
    let b = blocks(&parsed);
    assert!(matches!(&b[0], Block::BlockQuote(inner) if plain_text(inner) == "quoted\n"));
    let Block::List { kind, start, items } = &b[1] else {
        panic!("{:?}", b[1])
    };
    assert_eq!((*kind, *start, items.len()), (ListKind::Decimal, 3, 2));
    assert!(matches!(
        items[1].last(),
        Some(Block::List {
            kind: ListKind::Bullet,
            ..
        })
    ));
    assert_eq!(plain_text(&b[2..3]), "[x] done\n[ ] todo\n");
    assert_eq!(
        b[3],
        Block::CodeBlock {
            language: Some("rust".into()),
            text: "fn main() {}".into()
        }
    );
    assert!(
        matches!(&b[4], Block::Paragraph { content, .. } if content == &[text("line one"), Inline::LineBreak, text("line two soft")])
    );
}

#[test]
fn tables_keep_alignment_and_header_row() {
    let parsed = parse("| Name | Qty |\n|:-----|----:|\n| Egg  | 12  |\n");
    let Block::Table(table) = &blocks(&parsed)[0] else {
        panic!()
    };
    assert_eq!(table.head.len(), 1);
    assert_eq!(table.body.len(), 1);
    let cell: &Cell = &table.body[0].cells[1];
    assert_eq!(cell.align, Align::Right);
    assert_eq!(plain_text(&cell.blocks), "12\n");
    assert_eq!(table.head[0].cells[0].align, Align::Left);
}

#[test]
fn footnotes_become_notes_and_missing_ones_stay_text() {
    let parsed = parse("Text.[^a] More.[^missing]\n\n[^a]: The note.\n\n[^unused]: Kept anyway.\n");
    let para = first_paragraph(&parsed);
    assert!(para.contains(&Inline::NoteRef("a".into())));
    assert!(plain_text(&blocks(&parsed)).contains("[^missing]"));
    let ids: Vec<_> = parsed
        .document
        .notes
        .iter()
        .map(|n| n.id.as_str())
        .collect();
    assert_eq!(ids, ["a", "unused"]);
}

#[test]
fn inline_markup_maps_onto_the_model() {
    let parsed = parse("*em* **strong** ~~gone~~ `code` ^sup^ ~sub~ $x^2$ “smart” -- ...\n");
    let para = first_paragraph(&parsed);
    assert_eq!(para[0], Inline::Emphasis(vec![text("em")]));
    assert_eq!(para[2], Inline::Strong(vec![text("strong")]));
    assert_eq!(para[4], Inline::Strikethrough(vec![text("gone")]));
    assert_eq!(para[6], Inline::Code("code".into()));
    assert_eq!(para[8], Inline::Superscript(vec![text("sup")]));
    assert_eq!(para[10], Inline::Subscript(vec![text("sub")]));
    let Inline::Math(math) = &para[12] else {
        panic!("expected an equation, got {:?}", para[12]);
    };
    assert_eq!((math.display, math.tex.as_deref()), (false, Some("x^2")));
    assert!(math.mathml.as_deref().is_some_and(|m| m.contains("<msup>")));
    assert_eq!(para[13], text(" “smart” – …"));
}

#[test]
fn definition_lists() {
    let parsed = parse("Term\n: Definition one\n: Definition two\n");
    let Block::DefinitionList(defs) = &blocks(&parsed)[0] else {
        panic!("{:?}", blocks(&parsed))
    };
    assert_eq!(defs[0].term, [text("Term")]);
    assert_eq!(defs[0].definitions.len(), 2);
}

#[test]
fn inline_html_maps_onto_the_model() {
    let parsed = parse(
        "A <span lang=\"fr\">bon mot</span>, <b>bold</b>, <u>under</u>, <sub>2</sub>, \
         <span style=\"font-variant: small-caps\">caps</span>, <kbd>Ctrl</kbd>,<br>next \
         <a href=\"https://example.com\">site</a> &amp; <unknown>kept</unknown>.\n",
    );
    let para = first_paragraph(&parsed);
    assert_eq!(
        para[1],
        Inline::Lang {
            lang: "fr".into(),
            content: vec![text("bon mot")]
        }
    );
    assert!(para.contains(&Inline::Strong(vec![text("bold")])));
    assert!(para.contains(&Inline::Underline(vec![text("under")])));
    assert!(para.contains(&Inline::Subscript(vec![text("2")])));
    assert!(para.contains(&Inline::SmallCaps(vec![text("caps")])));
    assert!(para.contains(&Inline::Code("Ctrl".into())));
    assert!(para.contains(&Inline::LineBreak));
    assert!(para.contains(&Inline::Link {
        target: LinkTarget::External("https://example.com/".into()),
        content: vec![text("site")]
    }));
    assert!(crate::document::inline_text(&para).ends_with(" & kept."));
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn dangerous_html_is_dropped_with_its_content() {
    let parsed = parse(
        "Before <script>alert('x')</script> after.\n\n<script>\nvar a = '<b>no</b>';\n</script>\n\n\
         <iframe src=\"x\">frame text</iframe>\n\n<style>p { color: red }</style>\n\nEnd <!-- secret --> end.\n",
    );
    let all = plain_text(&blocks(&parsed));
    for gone in ["alert", "var a", "no", "frame text", "color", "secret"] {
        assert!(!all.contains(gone), "{gone} in {all}");
    }
    assert!(all.contains("Before  after."));
    assert!(all.contains("End  end."));
    assert!(codes(&parsed).iter().all(|c| *c == "html_dropped"));
    assert!(codes(&parsed).len() >= 3);
}

#[test]
fn block_html_becomes_blocks() {
    let parsed = parse(
        "<div lang=\"de\">\n<p>Guten <em>Tag</em> &eacute;</p>\n</div>\n\n<ul>\n<li>one\n<li>two</li>\n</ul>\n\n\
         <table><tr><th>H</th></tr><tr><td>cell</td></tr></table>\n\n<hr>\n\n<pre>\n  code\n</pre>\n\n<h2 id=\"x\">Heading</h2>\n",
    );
    let b = blocks(&parsed);
    assert_eq!(
        b[0],
        Block::Paragraph {
            align: Align::Default,
            content: vec![Inline::Lang {
                lang: "de".into(),
                content: vec![
                    text("Guten "),
                    Inline::Emphasis(vec![text("Tag")]),
                    text(" é")
                ]
            }]
        }
    );
    assert!(
        matches!(&b[1], Block::List { kind: ListKind::Bullet, items, .. } if items.len() == 2 && plain_text(&items[1]) == "two\n")
    );
    assert!(matches!(&b[2], Block::Table(t) if t.body.len() == 2 && t.body[0].cells[0].header));
    assert_eq!(b[3], Block::SceneBreak);
    assert_eq!(
        b[4],
        Block::CodeBlock {
            language: None,
            text: "  code".into()
        }
    );
    assert!(
        b.iter()
            .any(|x| matches!(x, Block::Heading { id: Some(id), .. } if id == "x"))
    );
}

#[test]
fn markdown_and_html_are_told_from_prose() {
    assert!(looks_like_markdown("---\ntitle: x\n---\n\nText"));
    assert!(looks_like_markdown(
        "# Title\n\nSome *text* here.\n\n## Two\n"
    ));
    assert!(looks_like_markdown(
        "Intro.\n\n- one\n- two\n- three\n\nSee [this](https://x.y).\n"
    ));
    assert!(!looks_like_markdown(
        "It was a dark night.\n\nShe said - quietly - no.\n\nThe end.\n"
    ));
    assert!(!looks_like_markdown(
        "Chapter 1\n\nHe paid 5 * 3 dollars.\n"
    ));
    // TeX mathematics is Markdown's, not prose's; prices are prose.
    assert!(looks_like_markdown("Euler: $e^{i\\pi} + 1 = 0$.\n"));
    assert!(looks_like_markdown("Inline \\(a_1\\) here.\n"));
    assert!(looks_like_markdown("The sum:\n\n$$\\sum_i i$$\n"));
    assert!(!looks_like_markdown(
        "It cost $5 and $10.\n\nFrom $3 to $4_000.\n"
    ));
}

#[test]
fn the_fixtures_formats_are_sniffed_right() {
    for (file, markdown) in [
        ("markdown/love-among-the-chickens.md", true),
        ("markdown/torture.md", true),
        ("text/love-among-the-chickens.txt", false),
    ] {
        let text = crate::test_support::fixture_text(file);
        assert_eq!(looks_like_markdown(&text), markdown, "{file}");
    }
}

#[test]
fn the_torture_test_reads_and_keeps_its_text() {
    let text = crate::test_support::fixture_text("markdown/torture.md");
    let parsed = parse(&text);
    let mut all = String::new();
    for chapter in &parsed.document.chapters {
        all.push_str(&plain_text(&chapter.blocks));
    }
    for note in &parsed.document.notes {
        all.push_str(&plain_text(&note.blocks));
    }
    let m = &parsed.document.metadata;
    assert_eq!(m.title.as_deref(), Some("A Markdown Torture Test"));
    assert_eq!(m.authors, ["Bindery Tests", "Anonymous Contributor"]);
    for kept in [
        "Level 2 with a link inside",
        "Setext level 2 with emphasis",
        "join into one.",
        "let eggs = hens * 0.8;",
        "This code block is indented by two tabs.",
        "These must not be unescaped: \\$ \\\\ \\> \\[ \\{ &amp;",
        "println!(\"cluck & <cluck>\");",
        "nested twice",
        "apples, a red fruit",
        "code inside a list item",
        "a lone * star, snake_case_words, 2 * 3 = 6, and an escaped *asterisk*.",
        "“Double quotes” and ‘single quotes’, it’s an apostrophe",
        "Dashes – en – and — em — and a range 5–7.",
        "Ellipses…and…and…",
        "AT&T is another way to write it, and so is AT&T.",
        "Copyright © 2024, a smiley ☺, a snowman ☃, and four < five.",
        "Here is a hen hen standing in a sentence.",
        "The long note, with several paragraphs.",
        "Its second paragraph, indented.",
        "A block of HTML around text that must be kept.",
        "An HTML table cell",
        "TeX between dollar signs keeps its source: α+β, and $5 is text",
        "Orpington",
        "The last paragraph.",
    ] {
        assert!(all.contains(kept), "lost: {kept}\n{all}");
    }
    assert!(!all.contains("document.write"));
    assert!(!all.contains("must not be shown") && !all.contains("hidden"));
    assert_eq!(parsed.document.notes.len(), 3);
}

#[test]
fn the_markdown_novel_has_its_chapters_and_metadata() {
    let text = crate::test_support::fixture_text("markdown/love-among-the-chickens.md");
    let start = std::time::Instant::now();
    let parsed = parse(&text);
    let elapsed = start.elapsed();
    eprintln!("markdown novel read in {elapsed:?}");
    let m = &parsed.document.metadata;
    assert_eq!(m.title.as_deref(), Some("Love Among the Chickens"));
    assert_eq!(m.authors, ["P. G. Wodehouse"]);
    let titles: Vec<_> = parsed
        .document
        .chapters
        .iter()
        .map(|c| c.title.as_str())
        .collect();
    assert_eq!(
        titles.len(),
        text.lines().filter(|l| l.starts_with("## ")).count()
    );
    assert_eq!(titles[0], "Dedication");
    assert_eq!(titles[1], "I");
    assert_eq!(titles[23], "XXIII");
    assert_eq!(
        parsed.document.chapters[0].division,
        crate::document::Division::Dedication
    );
    assert!(crate::document::word_count(&parsed.document) > 45_000);
}

#[test]
fn hostile_nesting_is_flattened_quickly_and_keeps_text() {
    let start = std::time::Instant::now();
    let quotes = format!("{}deep\n", ">".repeat(50_000));
    let spans = format!("{}text{}\n", "<span>".repeat(50_000), "</i>".repeat(50_000));
    let divs = format!("<div lang=\"x\">\n{}inner\n", "<blockquote>".repeat(50_000));
    let emphasis = format!("{}a{}\n", "*_".repeat(20_000), "_*".repeat(20_000));
    for input in [quotes, spans, divs, emphasis] {
        let one = std::time::Instant::now();
        let parsed = parse(&input);
        eprintln!("{:?} for {}…", one.elapsed(), &input[..20]);
        let all = plain_text(&blocks(&parsed));
        assert!(
            all.contains("deep")
                || all.contains("text")
                || all.contains("inner")
                || all.contains('a')
        );
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn deep_nesting_that_is_flattened_is_reported() {
    // A 30-level list: each level indented under the previous item's text.
    let mut list = String::from("# Deep\n\nIntro.\n\n");
    for level in 0..30 {
        list.push_str(&format!("{}- level {}\n", "  ".repeat(level), level + 1));
    }
    let parsed = parse(&list);
    let all = plain_text(&blocks(&parsed));
    assert!(all.contains("level 30"), "the text is kept: {all}");
    let warning = parsed
        .warnings
        .iter()
        .find(|w| w.code == "nesting_flattened")
        .unwrap_or_else(|| panic!("a warning: {:?}", parsed.warnings));
    assert!(warning.message.contains("30 levels"), "{}", warning.message);
    // The item at level 20 is the first past 40 containers (a list and an item per level).
    assert!(warning.message.contains("level 20"), "{}", warning.message);
    assert_eq!(warning.location.as_deref(), Some("line 24"));

    // A 50-level quote, after a few lines.
    let quote = format!("Before.\n\nMore.\n\n{}deep\n", "> ".repeat(50));
    let parsed = parse(&quote);
    assert!(plain_text(&blocks(&parsed)).contains("deep"));
    let warnings: Vec<_> = parsed
        .warnings
        .iter()
        .filter(|w| w.code == "nesting_flattened")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].message.contains("50 levels"),
        "{}",
        warnings[0].message
    );
    assert!(
        warnings[0].message.contains("level 40"),
        "{}",
        warnings[0].message
    );
    assert_eq!(warnings[0].location.as_deref(), Some("line 5"));

    // Nesting within the limit says nothing.
    let shallow = parse(&format!("{}deep\n", "> ".repeat(10)));
    assert!(!codes(&shallow).contains(&"nesting_flattened"));
}

/// The equations of a paragraph, as (display, TeX, converted).
fn equations(content: &[Inline]) -> Vec<(bool, String, bool)> {
    content
        .iter()
        .filter_map(|i| match i {
            Inline::Math(m) => Some((
                m.display,
                m.tex.clone().unwrap_or_default(),
                m.mathml.is_some(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn dollars_follow_pandocs_rules() {
    // Currency stays text; so does `$x$` followed by a digit, and a space inside the
    // delimiters; `\$` is a dollar.
    for prose in [
        "It cost $5 and $10 then.",
        "From $x$1 onwards.",
        "A $ x $ here.",
        "Escaped \\$x\\$ too.",
    ] {
        let parsed = parse(prose);
        let para = first_paragraph(&parsed);
        assert!(equations(&para).is_empty(), "{prose}: {para:?}");
        assert!(
            plain_text(&blocks(&parsed)).contains('$'),
            "{prose}: the dollar signs are kept"
        );
    }
    assert_eq!(
        plain_text(&blocks(&parse("From $x$1 onwards."))),
        "From $x$1 onwards.\n"
    );
    let para = first_paragraph(&parse("Let $a^2$ and $$\\int_0^1 f$$ be."));
    assert_eq!(
        equations(&para),
        [
            (false, "a^2".into(), true),
            (true, "\\int_0^1 f".into(), true)
        ]
    );
}

#[test]
fn backslash_delimiters_are_math_outside_code() {
    let para = first_paragraph(&parse(
        "Inline \\( \\frac{1}{2} \\) and display \\[x = y\\], not `\\(code\\)`.",
    ));
    assert_eq!(
        equations(&para),
        [
            (false, "\\frac{1}{2}".into(), true),
            (true, "x = y".into(), true)
        ]
    );
    assert!(para.contains(&Inline::Code("\\(code\\)".into())));
}

#[test]
fn an_equation_that_cannot_be_converted_stays_tex_with_a_warning_naming_it() {
    // pulldown-cmark follows braces up to 255 deep inside math; this is deeper than the
    // converter is trusted with, and within what the Markdown parser takes as math.
    let bomb = "{".repeat(200) + "x" + &"}".repeat(200);
    let text = format!("Fine $x$.\n\nBad $\\foo{{b}}$ here.\n\nBomb $${bomb}$$ too.\n");
    let parsed = parse(&text);
    let all: Vec<_> = blocks(&parsed)
        .iter()
        .flat_map(|b| match b {
            Block::Paragraph { content, .. } => equations(content),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(all.len(), 3);
    assert_eq!(
        all.iter().map(|e| e.2).collect::<Vec<_>>(),
        [true, false, false]
    );
    let warnings: Vec<_> = parsed
        .warnings
        .iter()
        .filter(|w| w.code == "math_not_converted")
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].message.contains("“\\foo{b}”"), "{warnings:?}");
    assert_eq!(warnings[0].location.as_deref(), Some("line 3"));
    assert!(
        warnings[1].message.contains("nests more than"),
        "{warnings:?}"
    );
    assert_eq!(warnings[1].location.as_deref(), Some("line 5"));
}
