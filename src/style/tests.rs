use super::*;

#[test]
fn every_built_in_style_reads_and_names_fonts_that_are_there() {
    assert_eq!(builtin::FILES[0].0, DEFAULT);
    assert!(builtin::FILES.len() >= 8);
    for (name, source) in builtin::FILES {
        let style = Style::parse(source).unwrap_or_else(|e| panic!("{name}: {e}"));
        style
            .check_files(source, &fonts::Families::default(), &[])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(StyleName::parse(name).is_ok(), "{name}");
        assert!(!style.description.is_empty(), "{name} says what it is for");
    }
}

#[test]
fn the_default_style_is_what_a_style_leaves_out() {
    let said = builtin::default_style();
    let unsaid = Style::parse("title = \"Bindery\"\ndescription = \"Libertinus Serif, centred titles, indented paragraphs: the look Bindery always had.\"").unwrap();
    assert_eq!(said, unsaid);
}

#[test]
fn large_print_is_sixteen_points_or_more() {
    let style = builtin::get("large-print").unwrap();
    assert!(style.body.size.is_some_and(|s| s.0 >= 16.0));
    assert!(!style.paragraph.justify);
}

#[test]
fn an_unknown_key_is_refused_with_its_line_and_the_keys_allowed() {
    let e = Style::parse("title = \"Mine\"\n\n[chapter]\nnumbering = \"roman\"\n").unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("numbering"), "{e}");
    assert!(e.message.contains("number"), "names what is allowed: {e}");
}

#[test]
fn a_value_out_of_range_or_of_another_kind_is_refused_with_its_line() {
    let e = Style::parse("title = \"Mine\"\n[paragraph]\ndrop_cap_lines = 9\n").unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.message.contains("2 to 5"), "{e}");
    let e = Style::parse("title = \"Mine\"\n[chapter]\nnumber = \"klingon\"\n").unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.message.contains("roman"), "lists the choices: {e}");
    let e = Style::parse("title = \"Mine\"\n[body]\nsize = \"big\"\n").unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
}

#[test]
fn a_colour_too_light_to_read_is_refused_with_the_contrast_it_has() {
    let e = Style::parse("title = \"Pale\"\n\n[colors]\naccent = \"#aaaaaa\"\n").unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("2.32:1"), "{e}");
    assert!(e.message.contains("4.5:1"), "{e}");
    assert!(Style::parse("title = \"Dark\"\n[colors]\naccent = \"#767676\"\n").is_ok());
}

#[test]
fn a_font_that_is_not_there_is_named_with_its_line() {
    let source = "title = \"Mine\"\n\n[body]\nfont = \"Comic Neue\"\n";
    let style = Style::parse(source).unwrap();
    let e = style
        .check_files(source, &fonts::Families::default(), &[])
        .unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("Comic Neue"), "{e}");
    assert!(
        e.message.contains("EB Garamond"),
        "lists the bundled ones: {e}"
    );
    let mut own = fonts::Families::default();
    own.add(fonts::Face {
        family: "Comic Neue".into(),
        file: "ComicNeue-Regular.ttf".into(),
        italic: false,
        bold: false,
        bytes: bytes::Bytes::new(),
    });
    assert!(style.check_files(source, &own, &[]).is_ok());
}

#[test]
fn a_style_name_is_plain() {
    assert!(StyleName::parse("large-print").is_ok());
    assert_eq!(StyleName::parse(" Classic ").unwrap().as_str(), "classic");
    for bad in ["", "a b", "-x", "x-", "a--b", "../etc", &"x".repeat(41)] {
        assert!(StyleName::parse(bad).is_err(), "{bad:?}");
    }
}
