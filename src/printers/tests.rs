use super::*;
use crate::report::Verdict;

/// A 6×9 paperback on white paper, laid out as Bindery lays it out for KDP, with `pages`.
fn kdp_book(pages: u32) -> Facts {
    let (w, h) = Trim::In6x9.inches();
    let spine = rules(Printer::Kdp).spine_width(pages, Paper::White);
    Facts {
        binding: Binding::Paperback,
        trim: Trim::In6x9,
        paper: Paper::White,
        bleed: false,
        inside_margin: rules(Printer::Kdp).inside_margin(pages) + 0.125,
        outside_margin: 0.5,
        interior: PdfFacts {
            pages,
            trim: (w, h),
            media: (w, h),
            ..PdfFacts::default()
        },
        cover: Some(check::Cover {
            spine,
            spine_text: pages >= 80,
            pdf: PdfFacts {
                pages: 1,
                media: (2.0 * w + spine + 0.25, h + 0.25),
                ..PdfFacts::default()
            },
        }),
    }
}

fn failed(check: &crate::report::PrinterCheck) -> Vec<&str> {
    check
        .rules
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .map(|r| r.rule.as_str())
        .collect()
}

#[test]
fn every_printer_table_reads_and_names_its_sources() {
    for printer in Printer::ALL {
        let rules = rules(printer);
        let sources = [
            &rules.trims.source,
            &rules.pages.source,
            &rules.inside_margin.source,
            &rules.outside_margin.source,
            &rules.bleed.source,
            &rules.spine_text.source,
            &rules.images.source,
            &rules.pdf.source,
        ];
        for source in sources {
            assert!(source.starts_with("https://"), "{printer}: {source}");
        }
        assert!(
            rules
                .inside_margin
                .bands
                .windows(2)
                .all(|b| b[0].up_to < b[1].up_to),
            "{printer}: bands rise"
        );
        for binding in [Binding::Paperback, Binding::Hardcover] {
            for paper in Paper::ALL {
                assert!(rules.page_limit(binding, paper).is_some(), "{printer}");
            }
        }
    }
}

#[test]
fn kdp_figures_are_kdp_s_published_ones() {
    let kdp = rules(Printer::Kdp);
    // KDP's gutter table, at its edges.
    for (pages, inches) in [
        (24, 0.375),
        (150, 0.375),
        (151, 0.5),
        (300, 0.5),
        (301, 0.625),
        (500, 0.625),
        (501, 0.75),
        (700, 0.75),
        (701, 0.875),
        (828, 0.875),
    ] {
        assert_eq!(kdp.inside_margin(pages), inches, "{pages} pages");
    }
    assert_eq!(kdp.inside_margin_band(400), "301 to 500 pages");
    assert_eq!(kdp.inside_margin_band(20), "up to 150 pages");
    // 300 pages of white paper: 0.6756 in.
    assert!((kdp.spine_width(300, Paper::White) - 0.6756).abs() < 1e-9);
    assert!((kdp.spine_width(300, Paper::Cream) - 0.75).abs() < 1e-9);
    let white = kdp.page_limit(Binding::Paperback, Paper::White).unwrap();
    let cream = kdp.page_limit(Binding::Paperback, Paper::Cream).unwrap();
    assert_eq!((white.min, white.max, cream.max), (24, 828, 776));
    // Lulu's spine: pages / 444 + 0.06 in.
    let lulu = rules(Printer::Lulu).spine_width(444, Paper::Cream);
    assert!((lulu - 1.06).abs() < 1e-3, "{lulu}");
}

#[test]
fn a_twenty_page_paperback_is_too_short_for_kdp() {
    let check = check(Printer::Kdp, rules(Printer::Kdp), &kdp_book(20));
    assert!(!check.passed);
    assert_eq!(failed(&check), ["page_count"]);
    let rule = check.rules.iter().find(|r| r.rule == "page_count").unwrap();
    assert_eq!(rule.found, "20 pages");
    assert!(rule.wanted.contains("24 to 828 pages"), "{}", rule.wanted);
    assert!(rule.advice.as_deref().unwrap().contains("Add 4 pages"));
    assert!(rule.source.starts_with("https://kdp.amazon.com/"));
}

#[test]
fn a_quarter_inch_gutter_at_400_pages_fails_kdp_s_gutter_rule() {
    let book = Facts {
        inside_margin: 0.25,
        ..kdp_book(400)
    };
    let check = check(Printer::Kdp, rules(Printer::Kdp), &book);
    assert_eq!(failed(&check), ["gutter"]);
    let rule = check.rules.iter().find(|r| r.rule == "gutter").unwrap();
    assert_eq!(rule.found, "0.250 in at 400 pages");
    assert_eq!(rule.wanted, "0.625 in at least, for 301 to 500 pages");
    assert!(rule.advice.as_deref().unwrap().contains("0.625 in"));
}

#[test]
fn a_book_made_to_kdp_s_rules_passes_them() {
    for pages in [24, 80, 153, 400, 828] {
        let check = check(Printer::Kdp, rules(Printer::Kdp), &kdp_book(pages));
        assert!(check.passed, "{pages} pages: {:?}", failed(&check));
    }
}

#[test]
fn what_the_pdf_says_fails_the_rules_it_breaks() {
    let mut book = kdp_book(200);
    book.interior.fonts_not_embedded = vec!["Helvetica".into()];
    book.interior.transparency = true;
    book.interior.bookmarks = true;
    book.interior.lowest_image = Some(pdf::ImageResolution {
        dpi: 150.0,
        page: 12,
        pixels: (600, 900),
    });
    let check = check(Printer::Kdp, rules(Printer::Kdp), &book);
    assert_eq!(
        failed(&check),
        [
            "image_resolution",
            "fonts_embedded",
            "transparency",
            "bookmarks"
        ]
    );
    let image = check
        .rules
        .iter()
        .find(|r| r.rule == "image_resolution")
        .unwrap();
    assert!(image.found.contains("150 dpi") && image.found.contains("page 12"));
    assert!(
        image
            .advice
            .as_deref()
            .unwrap()
            .contains("1200 × 1800 pixels")
    );
}

#[test]
fn a_rule_a_printer_only_recommends_is_advice() {
    // IngramSpark asks for PDF/X and device colour, and takes a PDF without them.
    let mut book = kdp_book(200);
    book.interior.device_independent_colour = true;
    book.inside_margin = 0.625;
    let check = check(Printer::IngramSpark, rules(Printer::IngramSpark), &book);
    assert!(check.passed, "{:?}", failed(&check));
    let advice: Vec<&str> = check
        .rules
        .iter()
        .filter(|r| r.verdict == Verdict::Advice)
        .map(|r| r.rule.as_str())
        .collect();
    assert_eq!(advice, ["spine_width", "colour", "pdf_standard"]);
}

#[test]
fn bleed_on_the_outside_edges_is_not_lulu_s() {
    let (w, h) = Trim::In6x9.inches();
    let mut book = kdp_book(100);
    book.bleed = true;
    book.interior.media = (w + 0.125, h + 0.25);
    assert!(!failed(&check(Printer::Kdp, rules(Printer::Kdp), &book)).contains(&"bleed"));
    let lulu = check(Printer::Lulu, rules(Printer::Lulu), &book);
    let bleed = lulu.rules.iter().find(|r| r.rule == "bleed").unwrap();
    assert_eq!(bleed.verdict, Verdict::Fail);
    assert!(bleed.wanted.contains("6.250 × 9.250"), "{}", bleed.wanted);
}
